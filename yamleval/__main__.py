from yamleval.cli import main

main()

import yamleval_case_missing_dependency  # noqa: F401  (not installed, on purpose)


def reply(input):
    return input

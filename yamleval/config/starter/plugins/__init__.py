"""The project's plugins, named in evals.yaml as plugins.module:function."""

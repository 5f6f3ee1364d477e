"""The built-in plugins: runners, scorers, agent tools, dataset sources and model clients, registered
as entry points (setup.cfg) and loaded through the same registry as a third party's."""

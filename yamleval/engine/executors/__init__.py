"""Where items run: threads of this process, or tasks on a Ray cluster."""

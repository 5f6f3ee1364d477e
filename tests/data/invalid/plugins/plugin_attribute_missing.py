def politeness(output):
    return 1.0

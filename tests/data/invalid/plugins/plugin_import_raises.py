raise RuntimeError("the API key is missing")


def reply(input):
    return input

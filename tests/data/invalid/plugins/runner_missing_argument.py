def reply(input, url, temperature=0.0):
    return input

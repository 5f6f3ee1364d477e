def reply(input, temperature=0.0, greeting="Hello"):
    return f"{greeting}, {input}"

class Bot:
    def __init__(self, model, temperature=0.0):
        self.model = model

    def __call__(self, input):
        return input

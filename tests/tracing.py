"""How often Keras traces a model's training step."""


def count_train_step_traces(model):
    """Wraps `model.train_step` so that each trace of it appends to the
    returned list: its length is the number of traces so far."""
    traces = []
    train_step = model.train_step

    def counted_train_step(data):
        traces.append(1)
        return train_step(data)

    model.train_step = counted_train_step
    return traces

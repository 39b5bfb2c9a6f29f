def compare(argv):
    raise NotImplementedError

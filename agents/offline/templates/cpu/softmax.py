PARAM_SPACE = [{}]
def render(match, params): raise NotImplementedError

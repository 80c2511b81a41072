"""One module per family: SMALL_KNOBS = (size, horizon) and reference(mechanism, params) -> u*."""

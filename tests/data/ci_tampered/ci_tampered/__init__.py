"""A package whose wheel the tests' lock gives the wrong SHA-256: it must never load."""

LOADED = True

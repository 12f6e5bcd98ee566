"""A package of the tests' package lock that depends on ci-base."""

import ci_base

ANSWER = ci_base.VALUE + 1

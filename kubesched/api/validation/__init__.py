"""The API server's create-time checks on Kubernetes objects, one module per API group.

Bad input must never reach the simulation: every problem is collected (one line each, naming file,
document and field path, worded like the API server's own messages) and raised as one InputError.
`checker` is the toolkit every group's rules use; `objects` says which rules check which kind and
holds the entry points. Semantic rules the API server applies in admission (priority ceilings,
`system-` names) live elsewhere; so do the checks of what is not a Kubernetes object: the Scenario
kind and the simulation's own annotations (kubesched.input) and component configurations (their
components).
"""

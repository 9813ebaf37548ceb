"""CustomResourceDefinitions (apiextensions.k8s.io/v1): what a definition says, whether it is valid,
and how the objects it defines are defaulted, pruned and validated."""

"""Controllers of kube-controller-manager that remove and replace pods: disruption (PDB status),
ReplicaSet, Deployment, DaemonSet, node lifecycle and taint-based eviction."""

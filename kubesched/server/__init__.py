"""`kubesched serve`: the Kubernetes REST API over HTTP on top of apiserver/ and store/."""

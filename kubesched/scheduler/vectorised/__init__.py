"""The scheduler's vectorised machinery, beside the upstream-shaped framework and preemption: each
part computes exactly what its upstream counterpart computes, node by node, only over arrays."""

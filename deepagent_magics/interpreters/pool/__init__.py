"""Kernels for sub-agents: one `Kernel` per sub-agent, kept ready by a `KernelPool`,
none outliving its host (`lifecycle`)."""

from ..._compat import old_paths

__path__ = old_paths(__path__)  # interpreters.pool.kernel: now pooled_kernel

from .pooled_kernel import HOST_KERNEL, Kernel, KernelStartError, start_kernel
from .lifecycle import live_kernel_dirs, live_kernel_pids
from .pool import DEFAULT_SIZE, KernelPool, default_pool, stop_default_pool

__all__ = ["HOST_KERNEL", "Kernel", "KernelStartError", "start_kernel", "live_kernel_dirs", "live_kernel_pids",
           "DEFAULT_SIZE", "KernelPool", "default_pool", "stop_default_pool"]

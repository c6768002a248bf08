# SPDX-License-Identifier: BSD-3-Clause
"""Lowering for pteron's own delegates, plugged into upstream ExecuTorch's exporter.

Needs upstream's ``executorch`` and ``torch`` (the exporter), never pteron's
native extension: lowering runs wherever the exporter runs.

``pteron.lowering.cuda``: ``CudaPartitioner`` and the ``PteronCudaBackend``
preprocess, for ``to_edge_transform_and_lower(..., partitioner=[CudaPartitioner()])``.
"""

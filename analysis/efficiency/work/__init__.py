"""The work models: FLOPs and bytes of one operator call from its recorded shapes and dtypes.

One module per family of operators, each with its conventions (TraceLens' where it has one;
docs/efficiency.md says where and by how much they differ): :mod:`.gemm`, :mod:`.attention`,
:mod:`.conv`, :mod:`.norm`, :mod:`.pointwise`, :mod:`.fused` and :mod:`.triton`.  They read
arguments through :mod:`profview.analysis.efficiency.op_args` and nothing else of the package.
"""

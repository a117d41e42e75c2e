"""The tables every view starts from, computed from a linked trace model.

Kernels (:mod:`.kernels`), operators with host and device, self and total time
(:mod:`.operators`, the same figures as torch's ``key_averages()`` table), the step breakdown
(:mod:`.steps`, with :mod:`.step_scope` deciding which work belongs to one step and
:mod:`.step_outliers` flagging slow ones), the overview figures (:mod:`.overview`), GPU idle gaps
(:mod:`.gaps`), memory (:mod:`.memory`), GPU time by module and source line (:mod:`.modules`),
drill-downs between operators and kernels (:mod:`.launches`), one inspected event
(:mod:`.instance`) and the Timeline's lanes (:mod:`.lanes`).  Uses the trace family only.
"""

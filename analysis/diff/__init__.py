"""Before and after: two profiles, or two jobs, compared figure by figure.

:mod:`.compare` puts two profiles' kernels, operators and steps side by side (every delta is
``after - before`` of the two sides' own figures); :mod:`.align` aligns one step of each trace
operator by operator so a renamed or fused kernel shows where it moved; :mod:`.phases` compares
serving phases per token; :mod:`.jobs` compares two jobs rank by rank.  The top family: it may use
any family below it.
"""

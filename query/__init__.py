"""SQL over every table profview exports: the tables of traces and jobs by their export names
(:mod:`.tables`, computed only when a query names them) and the engine that runs a query over
them (:mod:`.engine`, Polars SQL).  The CLI's ``profview query`` and the CI gate read these two."""

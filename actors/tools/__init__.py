"""What drives and inspects a running Cohort from outside: the CLI, admin, chaos, export, plots.

``cli.py`` is the ``cohort`` command; ``admin*.py`` are its ``groups`` and ``configs`` commands
(what Kafka's ``kafka-consumer-groups.sh`` and ``kafka-configs.sh`` do), one module per command
family; ``chaos.py`` kills actors while groups run and ``invariants.py`` checks the timelines
it collects; ``state_tables.py`` and ``export.py`` turn the partitions' state into Arrow tables
and Spark DataFrames or Parquet; ``timeline_plot.py`` draws ownership over time; ``demo.py``
and ``case_study.py`` are runnable walkthroughs. They use the runtime; it never uses them,
except that a partition builds its export tables with ``state_tables``.
"""

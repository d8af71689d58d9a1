"""What drives and inspects a running Cohort from outside: the CLI, admin, chaos, export, plots.

``cli.py`` is the ``cohort`` command (``cli_service.py`` runs its service and topic commands,
``cli_io.py`` holds what every command shares: the connection, results on stdout, exit codes;
``cli_parsers.py`` and ``cli_service_parsers.py`` their arguments). ``admin*.py`` hold the
commands' logic, one module per command family, as Kafka's tools split them:
``admin_service`` (start, stop, status), ``admin_topics`` (kafka-topics.sh), ``admin_groups``
and ``admin_offsets`` (kafka-consumer-groups.sh), ``admin_configs`` (kafka-configs.sh),
``admin_timelines``. ``chaos.py`` kills actors while groups run, following a schedule drawn from
its seed (``chaos_schedule.py``; the controller kill in ``chaos_controller.py``), and
``invariants.py`` / ``controller_invariants.py`` check what it collected; ``state_tables.py``
and ``export.py`` turn the partitions' state into Arrow tables and Spark DataFrames or Parquet;
``timeline_plot.py`` draws ownership over time; ``demo.py`` and ``case_study.py`` are runnable
walkthroughs. They use the runtime; it never uses them, except that a partition builds its
export tables with ``state_tables``.
"""

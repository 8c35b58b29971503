"""The single processor: one process reads the input, decides on its own index and writes the
outputs in Kafka transactions (``processor``, ``delivery``, ``idle``), notices a state that
holds less than the group committed (``lost_state``) and rebuilds it from the input
(``rebuild``)."""

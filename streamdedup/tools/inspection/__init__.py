"""Reading decided duplicates back for people: ``streamdedup inspect`` and the web inspector.

- :mod:`.pair`: a duplicate with its original and matched document, word diffs and the
  why-matched explanation (pure);
- :mod:`.reader`: the model every source shares (entries, pages, filters), pairing, clusters;
- :mod:`.file_source`: a file-mode output directory; :mod:`.kafka_source`: the duplicates topic.
"""

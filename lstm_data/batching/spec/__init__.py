"""What a batch looks like: :class:`~lstm_data.batching.spec.batch_spec.BatchSpec` and what it declares.

The lowest stage of :mod:`lstm_data.batching`; it reads no rows and builds no batch.

Modules
-------
batch_spec
    :class:`BatchSpec`: the declared inputs and targets, validated against a dataset.
fields, forms, outputs
    The fields :class:`Scalars` and :class:`Ragged`, their per-variable forms
    (:class:`Standardize`), and the outputs they resolve into.
checks, version
    Checks of the batch-wide options; the spec format version and its defaults.
derived, expressions
    Variables computed from others, and the bounded expression language they are written in.
augment, empty
    Declarations of per-batch noise and of what empty rows become (applied by the building stage).
plain, weaver, lstm_ee, fitting, fit_file
    The spec's file forms: plain data and TOML, weaver-core YAML, lstm_ee configs, and fitted
    standardisation.
"""

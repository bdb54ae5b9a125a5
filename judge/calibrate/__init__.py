"""Calibration: how far the judge agrees with hand labels, before it is trusted.

- `_agreement`: Cohen's kappa per dimension with a bootstrap interval;
- `_record`: the calibration record, and the gate that reads it (`_fit`: refits);
- `_sample`: stratified samples to label (`_spreadsheet`: labelled through a CSV);
- `_labels`: the label file, as every labeller reads and writes it;
- `_label`: the terminal labeller;
- `_review`: what the review app shows: the queue (`_review_queue`), the case
  (`_review_case`), agreement, the record (`_review_record`);
- `_probe_data`, `_probe_fit`, `_probe_train`: `judge local train`'s probe;
- `_report`: the HTML report;
- `_ppi`: rates from labels and the judge's verdicts (PPI++), `_estimate` per dimension.

Imports `judging` and the layers below it.
"""

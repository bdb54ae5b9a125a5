"""Calibration: how far the judge agrees with hand labels, before it is trusted.

- `_record`: Cohen's kappa per dimension with a bootstrap interval, the calibration record,
  and the gate that reads it;
- `_sample`: stratified samples to label, and the CSV round trip;
- `_labels`: the label file, as every labeller reads and writes it;
- `_label`: the terminal labeller;
- `_review`: what the review app shows: the queue, the case, agreement, the record;
- `_report`: the HTML report.

Imports `judging` and the layers below it.
"""

"""What people read: the terminal table and progress, charts, the sweep report and paired comparisons,
audits, trackers (W&B) and the reporter protocol."""

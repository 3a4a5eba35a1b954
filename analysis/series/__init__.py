"""Frames -> series: the metric alias table, the derived series, and the node's own thresholds they are judged against."""

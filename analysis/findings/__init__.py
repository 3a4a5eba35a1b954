"""Series -> findings: the `Finding` shape, what every detector gets (`Context`), the detectors, and the operations behind each window."""

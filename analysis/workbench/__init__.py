"""What a support engineer opens beside the incidents: the period's slow operations, system panels, the configuration audit."""

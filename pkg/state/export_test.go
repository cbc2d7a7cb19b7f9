package state

// FastYAML is fastYAML, for the external tests.
var FastYAML = fastYAML

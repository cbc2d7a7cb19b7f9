package etcd

// EnvVarsForTest is what the env-var loop computed last.
func (k *Component) EnvVarsForTest() (EnvVars, error) { return k.envVars() }

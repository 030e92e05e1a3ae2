package config

// ClientQuotas are the rate windows client quotas are measured over
// (Kafka's QuotaConfig): quota.window.num samples of
// quota.window.size.seconds each. The quotas themselves are set with
// AlterClientQuotas and live in etcd.
type ClientQuotas struct {
	WindowNum         int32 // quota.window.num (11, at least 1)
	WindowSizeSeconds int32 // quota.window.size.seconds (1, at least 1)
	// ControllerWindowNum and ControllerWindowSizeSeconds size the
	// controller_mutation_rate token bucket: controller.quota.window.num
	// (11) times controller.quota.window.size.seconds (1) of the rate.
	ControllerWindowNum         int32
	ControllerWindowSizeSeconds int32
	// MaxConnectionCreationRate is max.connection.creation.rate
	// (2147483647: none; at least 0): new connections a second over the
	// broker, measured over the client quota windows; past it the accept
	// loop waits (not on the inter-broker listener). Static only; the
	// listener-prefixed form is not read.
	MaxConnectionCreationRate int32
}

func parseClientQuotas(p *props) ClientQuotas {
	return ClientQuotas{
		WindowNum:         p.intAtLeast("quota.window.num", 1),
		WindowSizeSeconds: p.intAtLeast("quota.window.size.seconds", 1),

		ControllerWindowNum:         p.intAtLeast("controller.quota.window.num", 1),
		ControllerWindowSizeSeconds: p.intAtLeast("controller.quota.window.size.seconds", 1),
		MaxConnectionCreationRate:   p.intAtLeast("max.connection.creation.rate", 0),
	}
}

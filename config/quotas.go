package config

// ClientQuotas are the rate windows client quotas are measured over
// (Kafka's QuotaConfig): quota.window.num samples of
// quota.window.size.seconds each. The quotas themselves are set with
// AlterClientQuotas and live in etcd.
type ClientQuotas struct {
	WindowNum         int32 // quota.window.num (11, at least 1)
	WindowSizeSeconds int32 // quota.window.size.seconds (1, at least 1)
}

func parseClientQuotas(p *props) ClientQuotas {
	return ClientQuotas{
		WindowNum:         p.intAtLeast("quota.window.num", 1),
		WindowSizeSeconds: p.intAtLeast("quota.window.size.seconds", 1),
	}
}

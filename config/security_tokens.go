package config

import "time"

// parseDelegationTokens reads delegation.token.* as Kafka's
// DelegationTokenManagerConfigs defines them: the secret key (a PASSWORD;
// tokens are enabled only when it is set and not empty, as
// KafkaConfig.tokenAuthEnabled) and three durations of at least 1 ms. Kafka 4
// dropped the old alias delegation.token.master.key: it is an unknown key
// (a warning) and enables nothing, as in Kafka 4.4.
func parseDelegationTokens(p *props) (DelegationTokens, error) {
	d := DelegationTokens{
		SecretKey:           Password(p.str("delegation.token.secret.key")),
		MaxLifetime:         time.Duration(p.longAtLeast("delegation.token.max.lifetime.ms", 1)) * time.Millisecond,
		ExpiryTime:          time.Duration(p.longAtLeast("delegation.token.expiry.time.ms", 1)) * time.Millisecond,
		ExpiryCheckInterval: time.Duration(p.longAtLeast("delegation.token.expiry.check.interval.ms", 1)) * time.Millisecond,
	}
	if p.err != nil {
		return DelegationTokens{}, p.err
	}
	return d, nil
}

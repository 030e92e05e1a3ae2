package config

// parseDelegationTokens reads delegation.token.*. TODO(tokens).
func parseDelegationTokens(p *props) (DelegationTokens, error) {
	return DelegationTokens{}, nil
}

// Package security owns who a connection is: the principal a listener's
// TLS handshake or SASL exchange establishes, the TLS configurations built
// from a listener's ssl.* settings (keystores and truststores as Kafka
// reads them: PEM, PKCS12, JKS), the mapping of a client certificate's
// name to a principal (ssl.principal.mapping.rules), and the records of
// SCRAM credentials and delegation tokens that the controller keeps in etcd.
// The SASL mechanisms themselves are in security/sasl.
package security

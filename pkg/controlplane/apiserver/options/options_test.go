package options

import (
	"net"
	"strings"
	"testing"
)

func TestCompleteAdvertiseAddress(t *testing.T) {
	cases := []struct {
		name            string
		bind, advertise string
		want            string
	}{
		{"bound to all interfaces advertises loopback", "0.0.0.0", "", "127.0.0.1"},
		{"bound to one address advertises it", "10.1.2.3", "", "10.1.2.3"},
		{"an explicit advertise address is kept", "0.0.0.0", "192.0.2.7", "192.0.2.7"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := NewOptions()
			o.SecureServing.BindAddress = net.ParseIP(c.bind)
			if c.advertise != "" {
				o.GenericServerRunOptions.AdvertiseAddress = net.ParseIP(c.advertise)
			}
			o.SecureServing.ServerCert.CertKey.CertFile, o.SecureServing.ServerCert.CertKey.KeyFile = "a.crt", "a.key"
			completed, err := o.Complete()
			if err != nil {
				t.Fatal(err)
			}
			if got := completed.GenericServerRunOptions.AdvertiseAddress.String(); got != c.want {
				t.Fatalf("advertise address %s, want %s", got, c.want)
			}
		})
	}
}

func TestCompleteRequiresServingCertificate(t *testing.T) {
	_, err := NewOptions().Complete()
	if err == nil || !strings.Contains(err.Error(), "--tls-cert-file") {
		t.Fatalf("want an error naming --tls-cert-file, got %v", err)
	}
}

func TestValidateRequiresClientCA(t *testing.T) {
	o := NewOptions()
	o.SecureServing.ServerCert.CertKey.CertFile, o.SecureServing.ServerCert.CertKey.KeyFile = "a.crt", "a.key"
	completed, err := o.Complete()
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, e := range completed.Validate() {
		found = found || strings.Contains(e.Error(), "--client-ca-file")
	}
	if !found {
		t.Fatalf("Validate did not require --client-ca-file: %v", completed.Validate())
	}
}

package apiserver

import (
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/configfile"
)

// certificateFile is a PEM file of certificates a running server reads, and
// what it reads it for (the metric's "use" label).
type certificateFile struct{ use, path string }

// certificateFiles lists the certificate files of o's flags: the serving
// certificates, the CAs that verify clients and front proxies, the
// aggregator's client certificate and etcd's client certificate and CA.
func (c CompletedConfig) certificateFiles() []certificateFile {
	o := c.Config.Options
	var files []certificateFile
	add := func(use, path string) {
		if path != "" {
			files = append(files, certificateFile{use, path})
		}
	}
	add("serving", o.SecureServing.ServerCert.CertKey.CertFile)
	for _, sni := range o.SecureServing.SNICertKeys {
		add("serving", sni.CertFile)
	}
	if a := o.Authentication; a != nil {
		add("client-ca", a.ClientCAFile)
		if a.RequestHeader != nil {
			add("requestheader-client-ca", a.RequestHeader.ClientCAFile)
		}
	}
	add("proxy-client", o.ProxyClientCertFile)
	if o.Etcd != nil {
		add("etcd-client", o.Etcd.StorageConfig.Transport.CertFile)
		add("etcd-ca", o.Etcd.StorageConfig.Transport.TrustedCAFile)
	}
	return files
}

// certificateExpiration is gcp_certificate_expiration_timestamp_seconds:
// when the first certificate of each file a running server reads expires,
// read from the file at each scrape (the server reloads serving
// certificates and CAs from their files, so the file is what it will use).
// k8s.io/apiserver has no metric for its own certificates (only a
// histogram of the client certificates it is shown), and a certificate
// that expires unnoticed stops the control plane; kubeadm's answer is
// `kubeadm certs check-expiration`, gcp's `gcp pki check` and this gauge to
// alert on. The collector is process-wide, registered
// once; servers add their files while they run (servers of one test
// process share it).
var certificateExpiration = &certificateCollector{
	files: map[certificateFile]int{},
	desc: prometheus.NewDesc("gcp_certificate_expiration_timestamp_seconds",
		"When the certificate of a file the API server reads that expires first expires, in seconds since the epoch, by use (serving, client-ca, requestheader-client-ca, proxy-client, etcd-client, etcd-ca) and file.",
		[]string{"use", "file"}, nil),
}

type certificateCollector struct {
	register sync.Once
	desc     *prometheus.Desc

	mu    sync.Mutex
	files map[certificateFile]int // how many running servers read each
}

// watch adds files to the metric until the returned function is called.
func (c *certificateCollector) watch(files []certificateFile) (stop func()) {
	c.register.Do(func() { legacyregistry.RawMustRegister(c) })
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range files {
		c.files[f]++
	}
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, f := range files {
			if c.files[f]--; c.files[f] <= 0 {
				delete(c.files, f)
			}
		}
	}
}

// Describe implements prometheus.Collector.
func (c *certificateCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector. A file that cannot be read or
// holds no certificate has no series: `absent()` or the series' age alerts
// on that.
func (c *certificateCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	files := make([]certificateFile, 0, len(c.files))
	for f := range c.files {
		files = append(files, f)
	}
	c.mu.Unlock()
	sort.Slice(files, func(i, j int) bool { return files[i].path < files[j].path })
	for _, f := range files {
		data, err := configfile.Read(f.path)
		if err != nil {
			klog.V(2).InfoS("Certificate expiration metric", "file", f.path, "err", err)
			continue
		}
		certs, err := certutil.ParseCertsPEM(data)
		if err != nil {
			klog.V(2).InfoS("Certificate expiration metric", "file", f.path, "err", err)
			continue
		}
		first := certs[0].NotAfter
		for _, cert := range certs[1:] {
			if cert.NotAfter.Before(first) {
				first = cert.NotAfter
			}
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(first.Unix()), f.use, f.path)
	}
}

// Package sharedtest holds the tests of testserver.RunMain and
// Server.Namespace: a package whose tests share one server, each in its
// own namespace.
package sharedtest

// Package guards bounds what one request may cost before k8s.io's
// libraries do work that grows faster than the request
// (docs/architecture.md, decision 20; docs/security.md has each limit and
// why its value): a filter that measures how deeply and widely a write's
// body nests before anything decodes it (WithNestingLimit), a filter and an
// admission decorator that bound the time a write spends evaluating CEL
// (WithEvalBudget, WithPolicyBudget), and the admission chain wrapped so
// that the object a write makes is measured again (WithGuardedAdmission).
package guards

// Command rediskit diagnoses Redis connections the way the rediskit library
// sees them, runs local labs, and tours the library's behaviour.
//
// Exit codes: 0 ok, 1 the check failed, 2 usage error.
package main

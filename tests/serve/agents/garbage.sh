#!/bin/sh
# An agent that prints something that is not its document, and claims success.
head -c 3000 /dev/urandom | base64
exit 0

"""Edge to RabbitMQ: consumers of the SaaS-owned queues and the result publisher."""

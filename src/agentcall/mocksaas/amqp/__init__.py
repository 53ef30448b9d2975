"""RabbitMQ edge of the Mock SaaS (aio-pika): topology, publishing, result consumption."""

"""Notifications: a pass's outcome as a forge's commit status, Flux's event JSON, a Slack message,
a Microsoft Teams Adaptive Card or an Alertmanager alert.

``messages``, ``teams`` and ``alerts`` build the bodies (pure), ``notifier`` decides what to
send for a pass (filtered by ``runner.pipeline.eventfilter``) and remembers what was sent,
``delivery`` sends in the background with retries and backoff.
"""

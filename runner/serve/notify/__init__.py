"""Notifications: a pass's outcome as a forge's commit status, Flux's event JSON, a Slack message.

``messages`` builds the bodies (pure), ``notifier`` decides what to send for a pass and
remembers what was sent, ``delivery`` sends in the background with retries and backoff.
"""

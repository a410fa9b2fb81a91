"""The CI side of lockgate: build, push, sign and diff artifacts; scan images and update tags.

Runs in CI (GitHub Actions, GitLab, any shell). Imports ``lockgate``, never ``runner``.
"""

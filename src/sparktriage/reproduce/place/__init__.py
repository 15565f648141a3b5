"""Place onto the lab: ranks onto nodes and the launch planner's view (`labplan`), client
nodes onto lab nodes (`nodemap`), the client's addresses and interfaces replaced by the lab's
(`site`), device lists per lab node (`devices`), independent servers side by side (`beside`).
"""

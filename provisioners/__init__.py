"""provisioners"""
